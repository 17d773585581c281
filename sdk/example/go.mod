module github.com/vigilhq/vigil/sdk/example

go 1.26

require github.com/vigilhq/vigil/sdk v0.0.0

// Tests only: the plugin's build never pulls these (TestBuildPullsOnlyTheSDK).
require (
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	github.com/vigilhq/vigil/sdk/sdktest v0.0.0
	golang.org/x/text v0.14.0 // indirect
)

// Until the SDK's modules are published: the checkout's copies.
replace (
	github.com/vigilhq/vigil/sdk => ../
	github.com/vigilhq/vigil/sdk/sdktest => ../sdktest
)
