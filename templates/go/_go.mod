// A vigil predicate plugin (kind template.timer). Rename the module to
// your repository's path.
module example.com/vigil-plugin

go 1.26

require github.com/vigilhq/vigil/sdk v0.0.0

// Tests only (the schema test): the plugin's build never pulls it.
require github.com/vigilhq/vigil/sdk/sdktest v0.0.0

// Until the SDK's modules are published, their source is beside the
// plugin, as `vigil plugin new` wrote it (the vigil binary's own). Once
// they are, drop these and `go get github.com/vigilhq/vigil/sdk@latest
// github.com/vigilhq/vigil/sdk/sdktest@latest`.
replace (
	github.com/vigilhq/vigil/sdk => ./third_party/vigil-sdk
	github.com/vigilhq/vigil/sdk/sdktest => ./third_party/vigil-sdktest
)
