package images

// VerifyLayout is verifyLayout, for the tests of package images_test.
var VerifyLayout = verifyLayout
