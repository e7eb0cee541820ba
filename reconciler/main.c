/* mkueue-reconciler: skeleton entry point; the real server lands with its issue. */
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: mkueue-reconciler [--help] [--version]\n");
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--version") == 0) {
            printf("mkueue-reconciler %s\n", MKUEUE_VERSION);
            return 0;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        fprintf(stderr, "mkueue-reconciler: unknown argument %s\n", argv[i]);
        usage(stderr);
        return 2;
    }
    usage(stderr);
    return 2;
}
