// Package humanize formats sizes and rates for people.
package humanize

import "fmt"

// Bytes formats n in binary units: 512 B, 1.5 KiB, 84.6 MiB.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Rate formats bits per second: 1 Gbit/s, 200 Mbit/s.
func Rate(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%g Gbit/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%g Mbit/s", bps/1e6)
	}
	return fmt.Sprintf("%g bit/s", bps)
}
