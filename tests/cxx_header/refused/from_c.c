// expect-error: <enzyme/enzyme> is Enzyme's C++ interface
// The header is C++ only; a C file including it gets a clear error (issue 24 item 4).
#include <enzyme/enzyme>
int main(void) { return 0; }
