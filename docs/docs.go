// Package docs holds the documentation that ships inside the binary.
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml, the API's contract. It is embedded so the
// running server serves exactly the description it was built with (at
// /openapi.yaml), and a test checks it against the registered routes.
//
//go:embed openapi.yaml
var OpenAPI []byte
