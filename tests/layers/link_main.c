/* link_main.c — the program of tests/layers/: each module's library is
 * linked whole into it with only the modules below it (meson.build), so
 * that a call from a module to one above it is an undefined reference at
 * build time.  It runs nothing. */
int main(void)
{
	return 0;
}
