// Package readme checks the repository's README.md as a user copies from it: every YAML and JSON
// block parses (Kubernetes manifests decode strictly into their API types), config keys are the
// Config reference's, the image, location names and server flags of its commands add up, it stays
// a user's document, and its `velero … describe` samples have the shape of real output. The
// samples' comparison (Samples, Mismatches) is exported for the end-to-end suite, which checks
// them against a real Velero server's describe output; everything else lives in tests.
package readme
