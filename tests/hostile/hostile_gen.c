/* hostile_gen SHAPE N PATH: writes one hostile trace.dat shape (tests/common/hostile_shapes.c)
 * of size N to PATH (N 0: the shape's test size), for the CLI tests. hostile_gen --list prints
 * the shapes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostile_shapes.h"

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (unsigned i = 0; i < hostile_nr_shapes; i++)
			printf("%-24s %s\n", hostile_shapes[i].name, hostile_shapes[i].what);
		return 0;
	}
	if (argc != 4) {
		fprintf(stderr, "usage: hostile_gen SHAPE N PATH | --list\n");
		return 2;
	}
	const struct hostile_shape *s = hostile_shape(argv[1]);
	if (!s) {
		fprintf(stderr, "hostile_gen: no shape %s\n", argv[1]);
		return 2;
	}
	unsigned long long n = strtoull(argv[2], NULL, 10);
	if (s->write(argv[3], n ? n : s->small) != 0) {
		fprintf(stderr, "hostile_gen: cannot write %s\n", argv[3]);
		return 1;
	}
	return 0;
}
