#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/driver.h"

static void test_roundtrip(void **state)
{
	struct driver_state s = { "raw_exec", 1234, 987654321ULL, 1240, 987654399ULL, "/d/web.exit", "", "" };
	char *text = driver_state_to_json(&s);
	struct driver_state back;
	memset(&back, 0x55, sizeof(back));
	assert_int_equal(driver_state_from_json(text, &back, NULL), 0);
	assert_string_equal(back.driver, "raw_exec");
	assert_int_equal(back.shim_pid, 1234);
	assert_int_equal(back.shim_start_time, 987654321ULL);
	assert_int_equal(back.task_pid, 1240);
	assert_int_equal(back.task_start_time, 987654399ULL);
	assert_string_equal(back.exit_file, "/d/web.exit");
	free(text);
}

static void test_bad_state(void **state)
{
	static const char *bad[] = {
		"", "{", "[]", "{\"driver\":\"raw_exec\"}",
		"{\"driver\":\"raw_exec\",\"shim_pid\":-1,\"shim_start_time\":1,\"task_pid\":2,"
		"\"task_start_time\":1,\"exit_file\":\"/x\"}",
		"{\"driver\":\"raw_exec\",\"shim_pid\":1,\"shim_start_time\":1,\"task_pid\":2,"
		"\"task_start_time\":1,\"exit_file\":\"/x\",\"extra\":1}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct driver_state s = { .shim_pid = 77 };
		struct herd_err err = { 0 };
		assert_int_equal(driver_state_from_json(bad[i], &s, &err), -EINVAL);
		assert_int_equal(s.shim_pid, 77);
		assert_non_null(strstr(err.msg, "task state"));
	}
}

static void test_signals_and_registry(void **state)
{
	assert_int_equal(driver_signal_parse("SIGTERM"), SIGTERM);
	assert_int_equal(driver_signal_parse("int"), SIGINT);
	assert_int_equal(driver_signal_parse("9"), SIGKILL);
	assert_int_equal(driver_signal_parse("SIGNOPE"), -EINVAL);
	assert_int_equal(driver_signal_parse("0"), -EINVAL);
	assert_int_equal(driver_signal_parse(""), -EINVAL);
	assert_int_equal(driver_signal_parse(NULL), -EINVAL);
	/* every name a user may give herd alloc signal -s */
	assert_int_equal(driver_signal_parse("SIGUSR1"), SIGUSR1);
	assert_int_equal(driver_signal_parse("usr2"), SIGUSR2);
	assert_int_equal(driver_signal_parse("SigHup"), SIGHUP);
	assert_int_equal(driver_signal_parse("SIGWINCH"), SIGWINCH);
	assert_int_equal(driver_signal_parse("PIPE"), SIGPIPE);
	assert_int_equal(driver_signal_parse("SIGPOLL"), SIGIO);
	assert_int_equal(driver_signal_parse("10"), 10);
	assert_int_equal(driver_signal_parse("64"), NSIG - 1 == 64 ? 64 : -EINVAL);
	assert_int_equal(driver_signal_parse("65"), -EINVAL);
	assert_int_equal(driver_signal_parse("-9"), -EINVAL);
	assert_int_equal(driver_signal_parse("9x"), -EINVAL);
	assert_int_equal(driver_signal_parse("SIG"), -EINVAL);
	assert_int_equal(driver_signal_parse("SIGSIGTERM"), -EINVAL);
	assert_int_equal(driver_signal_parse("USR1 "), -EINVAL);
	{
		char buf[DRIVER_SIGNAL_NAME_MAX];
		assert_string_equal(driver_signal_name(SIGUSR1, buf), "SIGUSR1");
		assert_string_equal(driver_signal_name(SIGIO, buf), "SIGIO");
		assert_string_equal(driver_signal_name(40, buf), "signal 40");
		/* a name gives back its number */
		for (int sig = 1; sig < 32; sig++)
			if (strncmp(driver_signal_name(sig, buf), "signal ", 7))
				assert_int_equal(driver_signal_parse(buf), sig);
	}
	assert_non_null(driver_find("raw_exec"));
	assert_string_equal(driver_find("raw_exec")->name, "raw_exec");
	assert_null(driver_find("no_such_driver"));
	assert_ptr_equal(driver_all[0], driver_find("raw_exec"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_bad_state),
		cmocka_unit_test(test_signals_and_registry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
