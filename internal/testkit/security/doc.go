// Package security holds the plugin's security tests: no credential reaches a log line, the
// README's IAM policy is exactly what the plugin needs, and the plugin process starts no child
// process, listens on no socket and writes no file outside the temporary directory. They drive
// the built plugin binary through the Velero harness against the EC2 simulator (loopback only).
package security
