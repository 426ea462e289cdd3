// Package readme holds one test: every YAML and JSON code block of the repository's README.md
// parses (and Kubernetes manifests among them decode strictly into their API types), so a snippet
// users copy is never broken. The package has no code outside its test.
package readme
