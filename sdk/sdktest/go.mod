module github.com/vigilhq/vigil/sdk/sdktest

go 1.26

require (
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/vigilhq/vigil/sdk v0.0.0
)

require golang.org/x/text v0.14.0 // indirect

replace github.com/vigilhq/vigil/sdk => ../
