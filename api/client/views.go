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

// Overview is GET /api/v1/overview.
func (c *Client) Overview(ctx context.Context) (api.Overview, error) {
	var out api.Overview
	err := c.do(ctx, http.MethodGet, "/api/v1/overview", nil, nil, &out)
	return out, err
}

// ListRecipients is GET /api/v1/recipients.
func (c *Client) ListRecipients(ctx context.Context) (api.RecipientList, error) {
	var out api.RecipientList
	err := c.do(ctx, http.MethodGet, "/api/v1/recipients", nil, nil, &out)
	return out, err
}
