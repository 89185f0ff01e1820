/* wsl: is this a WSL2 guest?  See gpu.h. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu.h"

/* WSL2 kernels say so in their release string ("5.15.90.1-microsoft-
 * standard-WSL2"); /dev/dxg is the paravirtual GPU device WSL2 exposes. */
static bool file_names_wsl(const char *root, const char *rel)
{
	char path[4096], buf[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strcasestr(buf, "microsoft") || strstr(buf, "WSL");
}

bool gpu_detect_wsl(const char *root)
{
	char path[4096];
	if (!root)
		root = "";
	if (file_names_wsl(root, "proc/sys/kernel/osrelease") ||
	    file_names_wsl(root, "proc/version"))
		return true;
	snprintf(path, sizeof(path), "%s/dev/dxg", root);
	return access(path, F_OK) == 0;
}
