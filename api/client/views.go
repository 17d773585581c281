package client

import (
	"context"
	"net/http"

	"github.com/vigilhq/vigil/api"
)

// Cluster is GET /api/v1/cluster: the nodes serving the API and the
// partitions each owns.
func (c *Client) Cluster(ctx context.Context) (api.Cluster, error) {
	var out api.Cluster
	err := c.do(ctx, http.MethodGet, "/api/v1/cluster", nil, nil, &out)
	return out, err
}
