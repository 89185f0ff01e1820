/* herd-task-shim: the task shim as a program (see shim.h). */
#include "drivers/shim.h"

int main(int argc, char **argv)
{
	return task_shim_main(argc, argv);
}
