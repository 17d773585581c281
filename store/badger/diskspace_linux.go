package badger

import "syscall"

// statfsProbe measures with statfs(2) and stat(2).
type statfsProbe struct{}

// Free is the filesystem's blocks available to an unprivileged writer
// times their size: the root-only reserve of ext4 is not counted, so a
// host running as root keeps it as slack.
func (statfsProbe) Free(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// Allocated is the file's allocated blocks (512 bytes each, as stat(2)
// counts them): a sparse file's pages not yet written take none.
func (statfsProbe) Allocated(path string) (int64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, err
	}
	return st.Blocks * 512, nil
}

// realProbe is the platform's fsProbe.
func realProbe() fsProbe { return statfsProbe{} }
