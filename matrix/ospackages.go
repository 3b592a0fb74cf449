package matrix

import "strings"

// PackageManager names the package manager of an OS (an NVIDIA OS name
// such as ubuntu22.04 or rockylinux9): apt for Ubuntu (and Debian), dnf
// for Rocky Linux and UBI; "" for an OS gpuimg does not know.
func PackageManager(osName string) string {
	switch {
	case strings.HasPrefix(osName, "ubuntu"), strings.HasPrefix(osName, "debian"):
		return "apt"
	case strings.HasPrefix(osName, "rockylinux"), strings.HasPrefix(osName, "ubi"):
		return "dnf"
	}
	return ""
}

// stagePackages comes after every other check: a stack that passes them
// all but installs OS packages with another manager than the one the
// packages were named for.
const stagePackages = stageGPU + 1

// packagesFit says whether the OS of a stack that passed every other
// check can install the --apt packages (Constraints.Apt). They are apt
// names unless the user named the OS (--os rockylinux9 takes dnf names
// under the same flag), so without --os only an apt OS fits; the failure
// says which OS would have and how to get it.
func (s *search) packagesFit(o OS) bool {
	if len(s.c.Apt) == 0 || s.c.OS != "" || PackageManager(o.Name) == "apt" {
		return true
	}
	s.fails.add(stagePackages, "no Ubuntu image fits; %s does, but it installs packages with %s and --apt %s names apt packages when gpuimg picks the OS: give --os %s to install them with %s, or constraints an Ubuntu image meets",
		o.Name, PackageManager(o.Name), strings.Join(s.c.Apt, " "), o.Name, PackageManager(o.Name))
	return false
}
