package ebs

import (
	"fmt"
	"strconv"
)

// ConfigVolumeInitializationRate is the location config key of the Provisioned Rate for Volume
// Initialization, in MiB/s, of the volumes the location restores; unset, EBS initializes them
// at its default rate (blocks fetched from S3 on first read).
const ConfigVolumeInitializationRate = "volumeInitializationRate"

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
}

// parseRestore reads the location's restore keys.
func parseRestore(m map[string]string) (RestoreConfig, error) {
	var r RestoreConfig
	if v, ok := m[ConfigVolumeInitializationRate]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < minInitializationRate || n > maxInitializationRate {
			return RestoreConfig{}, fmt.Errorf("config key %q: %q is not a rate in MiB/s from %d to %d",
				ConfigVolumeInitializationRate, v, minInitializationRate, maxInitializationRate)
		}
		r.InitializationRate = int32(n)
	}
	return r, nil
}
