// Deliberately broken: the build test expects the compiler's complaint about this line in the error.
int accelhal_broken_function( { return 1; }
