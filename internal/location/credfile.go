package location

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// CredentialsDirName is the directory under the temp dir holding the credentials files.
const CredentialsDirName = "velero-async-credentials"

const (
	dirMode  os.FileMode = 0o700
	fileMode os.FileMode = 0o600
)

// fileNamePart reports whether a Secret name or key can be part of a file name as is. The API
// server allows neither a slash nor "." and ".." as names or keys, but a location's selector is
// not checked against that.
func fileNamePart(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, `/\`) && !strings.ContainsRune(s, 0)
}

// credentialsFileName names the file of a Secret key: a digest of the namespace, the Secret's
// name and the key, so that no two Secret keys ever share a file (Velero's own
// "<secret>-<key>" gives Secret "aws-account" key "a" and Secret "aws" key "account-a" one file).
func credentialsFileName(ns, secret, key string) string {
	sum := sha256.Sum256([]byte(ns + "\x00" + secret + "\x00" + key))
	return "secret-" + hex.EncodeToString(sum[:credentialsNameBytes])
}

// credentialsNameBytes is how many bytes of the digest name a credentials file: 128 bits.
const credentialsNameBytes = 16

// credentialFiles are the files the Secret keys are written to, under tempDir, or put in
// files when set (WithFiles).
type credentialFiles struct {
	tempDir string
	files   Files
	fileMu  sync.Mutex
}

// credentialsDir returns <tempDir>/velero-async-credentials/<ns>, created private to the
// process's user: a directory another user owns cannot be made private and is refused.
func (s *credentialFiles) credentialsDir(ns string) (string, error) {
	if !fileNamePart(ns) {
		return "", fmt.Errorf("namespace %q cannot name a directory", ns)
	}
	root := filepath.Join(s.tempDir, CredentialsDirName)
	dir := filepath.Join(root, ns)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return "", fmt.Errorf("creating credentials directory: %w", err)
	}
	for _, d := range []string{root, dir} {
		fi, err := os.Lstat(d)
		if err != nil {
			return "", fmt.Errorf("credentials directory: %w", err)
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("credentials directory %s is not a directory", d)
		}
		if fi.Mode().Perm() != dirMode {
			if err := os.Chmod(d, dirMode); err != nil {
				return "", fmt.Errorf("making credentials directory private: %w", err)
			}
		}
	}
	return dir, nil
}

// writeFile puts data in <credentialsDir(ns)>/<name> with mode 0600 (in files, when set: name
// already tells namespaces apart), rewriting it only when its content or mode differs. The new content is renamed into place, so a reader never sees a
// partial file. data is never logged.
func (s *credentialFiles) writeFile(ns, name string, data []byte) (string, error) {
	if s.files != nil {
		return s.files.Put(name, data)
	}
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	dir, err := s.credentialsDir(ns)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() == fileMode {
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
			return path, nil
		}
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+name+"-*")
	if err != nil {
		return "", fmt.Errorf("writing credentials file: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if err := tmp.Chmod(fileMode); err != nil {
		tmp.Close()
		return "", fmt.Errorf("writing credentials file: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", fmt.Errorf("writing credentials file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("writing credentials file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("writing credentials file: %w", err)
	}
	return path, nil
}
