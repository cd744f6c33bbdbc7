/* placeholder: the refengine helper replaces this file */
#include "compat.h"
#include <stdio.h>
int main(void) { fputs("refengine: not built yet\n", stderr); return 2; }
