package matrix

// SystemCuDNNFits reports whether a framework built against cuDNN built
// (major.minor or longer) can load the cuDNN have found in the image: the
// same major version and at least the build's minor. TensorFlow's loader
// states the rule when it refuses a library ("Loaded runtime CuDNN library:
// 8.8.0 but source was compiled with: 8.9.4. CuDNN library needs to have
// matching major version and equal or higher minor version",
// tensorflow/tensorflow#62626); cuDNN keeps its API within a major version.
func SystemCuDNNFits(built, have Version) bool {
	if built.IsZero() {
		return true
	}
	return built.Major() == have.Major() && !have.Trunc(2).Less(built.Trunc(2))
}
