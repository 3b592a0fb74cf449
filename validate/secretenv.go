package validate

// The secrets check for callers outside a walk: gpuimg capture drops the
// environment variables it flags and refuses --copy files that hold a
// secret, with the same rules validate applies to an image.

// EnvSecret says what the secrets check finds in one environment
// variable (KEY=VALUE): "" when nothing, else a sentence that names the
// variable and never shows its value.
func EnvSecret(kv string) string {
	if out := secretInEnv([]string{kv}); len(out) > 0 {
		return out[0]
	}
	return ""
}

// FileSecrets says what secrets the file at path p (for its name) with
// content b holds: one phrase each, values redacted; none when clean.
func FileSecrets(p string, b []byte) []string {
	ms := secretsInFile(p, b)
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.String()
	}
	return out
}
