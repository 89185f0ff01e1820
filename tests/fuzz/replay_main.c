/* Runs a libFuzzer target over every file of a corpus directory, so that
 * corpora replay as ordinary tests in every build (ASan/UBSan included). */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rbe");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	do {
		if (len == cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	size_t count = 0;
	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		struct dirent *e;
		if (!d) {
			if (replay_file(argv[i]) < 0)
				return 1;
			count++;
			continue;
		}
		while ((e = readdir(d))) {
			char path[4096];
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			if (replay_file(path) < 0)
				return 1;
			count++;
		}
		closedir(d);
	}
	if (count == 0) {
		fprintf(stderr, "replay: no corpus files found\n");
		return 1;
	}
	printf("replayed %zu inputs\n", count);
	return 0;
}
