package process

import (
	"sync"
	"time"
)

// MemorySampler samples the peak resident memory of the running children of one process that
// run one binary.
type MemorySampler struct {
	ppid   int
	binary string
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	peak   int64
}

// SampleMemory starts sampling the children of ppid running binary every interval until Stop.
func SampleMemory(ppid int, binary string, interval time.Duration) *MemorySampler {
	s := &MemorySampler{ppid: ppid, binary: binary, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *MemorySampler) sample() {
	for _, pid := range Running(s.ppid, s.binary) {
		if b := peakResident(pid); b > 0 {
			s.mu.Lock()
			s.peak = max(s.peak, b)
			s.mu.Unlock()
		}
	}
}

// Stop ends sampling and returns the peak in bytes of any single process.
func (s *MemorySampler) Stop() int64 {
	close(s.stop)
	<-s.done
	return s.Peak()
}

// Peak returns the highest peak resident memory seen so far, in bytes.
func (s *MemorySampler) Peak() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}
