// A vigil predicate plugin (kind template.timer). Rename the module to
// your repository's path.
module example.com/vigil-plugin

go 1.26

require github.com/vigilhq/vigil/sdk v0.0.0

// Until the SDK is published, its source is beside the plugin, as
// `vigil plugin new` wrote it (the vigil binary's own SDK). Once it is,
// drop this replace and `go get github.com/vigilhq/vigil/sdk@latest`.
replace github.com/vigilhq/vigil/sdk => ./third_party/vigil-sdk
