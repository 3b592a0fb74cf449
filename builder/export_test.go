package builder

// ProofPy is proof.py, for the tests of package builder_test (which may
// import internal/testenv; package builder's own tests may not, as
// testenv imports builder).
var ProofPy = proofPy
