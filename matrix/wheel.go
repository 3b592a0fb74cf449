package matrix

// WheelFit is how a framework wheel built for one CUDA runs on an image
// with another (CUDA minor-version compatibility: a wheel runs on an
// image of the same major whose minor is no older than the wheel's).
type WheelFit int

// Wheel fits.
const (
	// WheelSameCUDA: built for the image's CUDA major.minor.
	WheelSameCUDA WheelFit = iota
	// WheelMinorCompat: built for an older minor of the image's major;
	// it runs through minor-version compatibility.
	WheelMinorCompat
	// WheelOtherMajor: built for another CUDA major; it does not run.
	WheelOtherMajor
	// WheelNewer: built for a newer minor than the image's; it does not run.
	WheelNewer
)

// Runs says whether a wheel with this fit runs on the image.
func (f WheelFit) Runs() bool { return f == WheelSameCUDA || f == WheelMinorCompat }

// FitWheel says how a wheel built for CUDA wheel runs on an image with CUDA
// image; only major and minor count (12.1 and 12.1.1 are the same).
func FitWheel(wheel, image Version) WheelFit {
	w, i := wheel.Trunc(2), image.Trunc(2)
	switch {
	case w.Major() != i.Major():
		return WheelOtherMajor
	case i.Less(w):
		return WheelNewer
	case w.Compare(i) == 0:
		return WheelSameCUDA
	}
	return WheelMinorCompat
}
