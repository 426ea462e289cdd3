package model

import (
	"fmt"
	"strconv"
)

// Location config keys of how restored volumes are initialized.
const (
	// ConfigVolumeInitializationRate is the location config key of the Provisioned Rate for
	// Volume Initialization, in MiB/s, of the volumes the location restores; unset, EBS
	// initializes them at its default rate (blocks fetched from S3 on first read).
	ConfigVolumeInitializationRate = "volumeInitializationRate"
	// ConfigWaitForVolumeInitialization, when true, keeps a restore's volume operations in
	// progress until EC2 reports each volume fully initialized, not only available.
	ConfigWaitForVolumeInitialization = "waitForVolumeInitialization"
	// ConfigVolumeInitializationFallback, when true, restores a volume for which EC2 refuses
	// the volumeInitializationRate at EBS's default rate instead of failing its restore.
	ConfigVolumeInitializationFallback = "volumeInitializationFallback"
)

// EC2's range of VolumeInitializationRate, in MiB/s.
const (
	minInitializationRate = 100
	maxInitializationRate = 300
)

// RestoreConfig is how a location restores volumes.
type RestoreConfig struct {
	// InitializationRate, when non-zero, is the rate in MiB/s at which EBS initializes a volume
	// restored from a snapshot.
	InitializationRate int32
	// WaitForInitialization keeps a restored volume's operation in progress until EC2 reports
	// the volume fully initialized.
	WaitForInitialization bool
	// InitializationFallback restores at EBS's default rate a volume for which EC2 refuses
	// InitializationRate.
	InitializationFallback bool
}

// ParseRestore reads the location's restore keys. Every error names the key and its value.
func ParseRestore(m map[string]string) (RestoreConfig, error) {
	var r RestoreConfig
	if v, ok := m[ConfigVolumeInitializationRate]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < minInitializationRate || n > maxInitializationRate {
			return RestoreConfig{}, fmt.Errorf("config key %q: %q is not a rate in MiB/s from %d to %d",
				ConfigVolumeInitializationRate, v, minInitializationRate, maxInitializationRate)
		}
		r.InitializationRate = int32(n)
	}
	var err error
	if r.WaitForInitialization, err = parseBoolKey(m, ConfigWaitForVolumeInitialization); err != nil {
		return RestoreConfig{}, err
	}
	if r.InitializationFallback, err = parseBoolKey(m, ConfigVolumeInitializationFallback); err != nil {
		return RestoreConfig{}, err
	}
	if v, ok := m[ConfigVolumeInitializationFallback]; ok && r.InitializationRate == 0 {
		return RestoreConfig{}, fmt.Errorf("config key %q (value %q) needs %q",
			ConfigVolumeInitializationFallback, v, ConfigVolumeInitializationRate)
	}
	return r, nil
}

// parseBoolKey reads the true/false key k of m; false when m lacks it.
func parseBoolKey(m map[string]string, k string) (bool, error) {
	v, ok := m[k]
	if !ok {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("config key %q: %q is not true or false", k, v)
	}
	return b, nil
}
