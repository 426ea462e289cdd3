// Package security holds the plugin's security tests: no credential reaches a log line, the
// README's IAM policy is exactly what the plugin needs (and, on the bucket, the upstream plugin), the plugin process starts no child
// process, listens on no socket and writes no file outside the temporary directory, and hostile
// input (PVs, operation IDs, location config, tags) gets a clear error, never a panic. They
// drive the built plugin binary through the rig against the EC2 simulator (loopback only); the
// hostile-input tests make the plugins in this process through plugin.Register.
package security
