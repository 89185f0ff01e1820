/* Variables, the pure parts: path and item validation, records, path
 * globs, and the variables block of ACL policies (HCL and JSON). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/acl.h"
#include "server/teams.h"
#include "server/vars.h"
#include "server/vars_crypt.h"
#include "server/vars_keyring.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_paths(void **state)
{
	static const char *const good[] = { "a", "db/creds", "nomad/jobs/train", "x_y-z.1~2",
					    "a/b/c/d/e", "..x", "x..", NULL };
	static const char *const bad[] = { "", "/a", "a/", "a//b", "a/../b", "..", ".", "a/./b",
					   "a b", "a=b", "a@b", "db/ä", "a\nb", "a%2Fb", NULL };
	char longest[VARS_MAX_PATH + 2];
	struct herd_err err = { 0 };
	(void)state;
	for (int i = 0; good[i]; i++)
		assert_int_equal(vars_check_path(good[i], &err), 0);
	for (int i = 0; bad[i]; i++) {
		err.msg[0] = '\0';
		assert_int_equal(vars_check_path(bad[i], &err), -EINVAL);
		assert_true(strlen(err.msg) > 0);
	}
	assert_int_equal(vars_check_path(NULL, &err), -EINVAL);
	memset(longest, 'a', VARS_MAX_PATH);
	longest[VARS_MAX_PATH] = '\0';
	assert_int_equal(vars_check_path(longest, &err), 0);
	longest[VARS_MAX_PATH] = 'a';
	longest[VARS_MAX_PATH + 1] = '\0';
	assert_int_equal(vars_check_path(longest, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "at most 128"));
	assert_true(vars_prefix_valid(""));
	assert_true(vars_prefix_valid("db/"));
	assert_false(vars_prefix_valid("db x"));
}

static int check_items(const char *json, struct herd_err *err)
{
	json_t *items = json_loads(json, JSON_ALLOW_NUL, NULL);
	int rc = vars_check_items(items, err);
	json_decref(items);
	return rc;
}

static void test_items(void **state)
{
	struct herd_err err = { 0 };
	json_t *big;
	char *value;
	(void)state;
	assert_int_equal(check_items("{\"password\": \"s3cret\", \"user.name\": \"\"}", &err), 0);
	assert_int_equal(check_items("{}", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "at least one item"));
	assert_int_equal(check_items("[\"a\"]", &err), -EINVAL);
	assert_int_equal(check_items("{\"a\": 1}", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "\"a\""));
	assert_int_equal(check_items("{\"a b\": \"x\"}", &err), -EINVAL);
	assert_int_equal(check_items("{\"\": \"x\"}", &err), -EINVAL);
	assert_int_equal(check_items("{\"a\": \"x\\u0000y\"}", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "NUL"));
	/* the size limit counts keys and values together */
	value = malloc(VARS_MAX_SIZE);
	memset(value, 'v', VARS_MAX_SIZE - 1);
	value[VARS_MAX_SIZE - 1] = '\0';
	big = json_pack("{s:s}", "k", value); /* 1 + 65535 bytes: at the limit */
	assert_int_equal(vars_check_items(big, &err), 0);
	json_object_set_new(big, "k2", json_string("")); /* 2 bytes more */
	assert_int_equal(vars_check_items(big, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "at most 65536"));
	json_decref(big);
	free(value);
}

static void test_record_and_metadata(void **state)
{
	json_t *items = json_pack("{s:s}", "k", "v");
	json_t *first = vars_record("default", "db/x", items, NULL, 100), *second, *meta;
	(void)state;
	assert_int_equal(json_integer_value(json_object_get(first, "create_time")), 100);
	second = vars_record("default", "db/x", items, first, 200);
	assert_int_equal(json_integer_value(json_object_get(second, "create_time")), 100);
	assert_int_equal(json_integer_value(json_object_get(second, "modify_time")), 200);
	meta = vars_metadata(second);
	assert_null(json_object_get(meta, "items"));
	assert_non_null(json_object_get(second, "items")); /* the record keeps them */
	assert_string_equal(json_string_value(json_object_get(meta, "path")), "db/x");
	json_decref(meta);
	json_decref(first);
	json_decref(second);
	json_decref(items);
}

static void test_globs(void **state)
{
	size_t len;
	(void)state;
	assert_true(vars_glob_match("db/*", "db/creds", &len) && len == 3);
	assert_true(vars_glob_match("*", "anything", &len) && len == 0);
	assert_true(vars_glob_match("db/creds", "db/creds", &len) && len == 8);
	assert_false(vars_glob_match("db/creds", "db/creds2", &len));
	assert_false(vars_glob_match("db/*", "dbx/creds", &len));
}

static json_t *hcl_rules(const char *text, struct diag_list *dl)
{
	diag_list_init(dl);
	return acl_rules_from_hcl(text, strlen(text), dl);
}

static void test_policy_variables(void **state)
{
	struct diag_list dl;
	struct herd_err err = { 0 };
	json_t *r, *bad;
	(void)state;
	r = hcl_rules("namespace \"team-a\" {\n  policy = \"read\"\n  variables {\n"
		      "    path \"db/*\" {\n      capabilities = [\"read\", \"list\"]\n    }\n"
		      "    path \"ops/key\" {\n      capabilities = [\"deny\"]\n    }\n  }\n}\n",
		      &dl);
	assert_non_null(r);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "namespace"),
							      "team-a")), "read");
	assert_int_equal(acl_vars_caps(json_object_get(json_object_get(json_object_get(
					r, "variables"), "team-a"), "db/*")),
			 ACL_VAR_READ | ACL_VAR_LIST);
	assert_int_equal(acl_vars_caps(json_object_get(json_object_get(json_object_get(
					r, "variables"), "team-a"), "ops/key")), 16);
	json_decref(r);
	diag_list_release(&dl);
	/* only variables: no level for the namespace */
	r = hcl_rules("namespace \"*\" {\n  variables {\n    path \"*\" {\n"
		      "      capabilities = [\"write\"]\n    }\n  }\n}\n", &dl);
	assert_non_null(r);
	assert_null(json_object_get(json_object_get(r, "namespace"), "*"));
	json_decref(r);
	diag_list_release(&dl);
	/* a capability that does not exist, a bad path */
	assert_null(hcl_rules("namespace \"a\" {\n  variables {\n    path \"db/*\" {\n"
			      "      capabilities = [\"admin\"]\n    }\n  }\n}\n", &dl));
	diag_list_release(&dl);
	assert_null(hcl_rules("namespace \"a\" {\n  variables {\n    path \"db//x\" {\n"
			      "      capabilities = [\"read\"]\n    }\n  }\n}\n", &dl));
	diag_list_release(&dl);
	/* JSON: checked the same way */
	bad = json_loads("{\"variables\": {\"a\": {\"db/*\": [\"sudo\"]}}}", 0, NULL);
	assert_null(acl_rules_check(bad, &err));
	assert_non_null(strstr(err.msg, "capability"));
	json_decref(bad);
	bad = json_loads("{\"variables\": {\"a b\": {\"db/*\": [\"read\"]}}}", 0, NULL);
	assert_null(acl_rules_check(bad, &err));
	json_decref(bad);
}

static void test_key_and_sealing(void **state)
{
	char dir[] = "/tmp/herd-vars-XXXXXX", path[64], id[VARS_KEY_ID_LEN + 1], id2[17];
	unsigned char key[VARS_KEY_LEN], again[VARS_KEY_LEN], other[VARS_KEY_LEN];
	struct herd_err err = { 0 };
	json_t *items = json_pack("{s:s, s:s}", "password", "s3cret", "user", "app");
	json_t *sealed, *opened;
	struct stat st;
	char *text;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, VARS_KEY_FILE);
	/* made at the first load, 0600, the same at the next */
	assert_int_equal(vars_key_load(dir, key, id, NULL, &err), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, VARS_KEY_LEN);
	assert_int_equal(vars_key_load(dir, again, id2, NULL, &err), 0);
	assert_memory_equal(key, again, VARS_KEY_LEN);
	assert_string_equal(id, id2);

	sealed = vars_seal(key, id, "default", "db/creds", items, &err);
	assert_non_null(sealed);
	text = json_dumps(sealed, 0);
	assert_null(strstr(text, "s3cret")); /* not in clear */
	free(text);
	opened = vars_unseal(key, id, "default", "db/creds", sealed, &err);
	assert_non_null(opened);
	assert_true(json_equal(opened, items));
	json_decref(opened);
	/* another variable's path or namespace: does not open */
	assert_null(vars_unseal(key, id, "default", "db/other", sealed, &err));
	assert_null(vars_unseal(key, id, "team-a", "db/creds", sealed, &err));
	/* another key of the same id (a forged id): does not open either */
	memcpy(other, key, sizeof(other));
	other[0] ^= 1;
	assert_null(vars_unseal(other, id, "default", "db/creds", sealed, &err));
	/* another key id: says which key it needs */
	assert_null(vars_unseal(key, "0000000000000000", "default", "db/creds", sealed, &err));
	assert_non_null(strstr(err.msg, id));
	/* two seals of the same items differ (a nonce each) */
	json_t *second = vars_seal(key, id, "default", "db/creds", items, &err);
	assert_false(json_equal(second, sealed));
	json_decref(second);
	/* a key file others may read, or of the wrong size: refused */
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(vars_key_load(dir, again, id2, NULL, &err), -EPERM);
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(truncate(path, 16), 0);
	assert_int_equal(vars_key_load(dir, again, id2, NULL, &err), -EINVAL);
	unlink(path);
	rmdir(dir);
	json_decref(sealed);
	json_decref(items);
}

/* The file of retired key id under dir, into path. */
static void retired_path(char *path, size_t n, const char *dir, const char *id)
{
	snprintf(path, n, "%s/%s/%s.key", dir, VARS_KEYS_DIR, id);
}

static void test_keyring_rotate_and_remove(void **state)
{
	char dir[] = "/tmp/herd-ring-XXXXXX", path[128], old_id[17], new_id[17], id[17];
	struct herd_err err = { 0 };
	struct vars_keyring ring;
	json_t *items = json_pack("{s:s}", "password", "s3cret"), *old_blob, *new_blob, *opened;
	struct stat st;
	int64_t first_created;
	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(vars_keyring_open(&ring, dir, &err), 0);
	assert_int_equal(ring.nkeys, 1);
	first_created = ring.keys[0].create_time;
	old_blob = vars_keyring_seal(&ring, "default", "db/creds", items, &err);
	assert_non_null(old_blob);

	/* a rotation: a new active key, the old one kept on disk with its
	 * creation time, and what it sealed still opens */
	assert_int_equal(vars_keyring_rotate(&ring, old_id, new_id, &err), 0);
	assert_string_not_equal(old_id, new_id);
	assert_string_equal(json_string_value(json_object_get(old_blob, "key_id")), old_id);
	vars_keyring_active(&ring, id);
	assert_string_equal(id, new_id);
	retired_path(path, sizeof(path), dir, old_id);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_true((int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec == first_created);
	new_blob = vars_keyring_seal(&ring, "default", "db/creds", items, &err);
	assert_string_equal(json_string_value(json_object_get(new_blob, "key_id")), new_id);
	opened = vars_keyring_unseal(&ring, "default", "db/creds", old_blob, &err);
	assert_true(json_equal(opened, items));
	json_decref(opened);
	vars_keyring_close(&ring);

	/* opened again from disk: both keys, oldest first, the new one active */
	assert_int_equal(vars_keyring_open(&ring, dir, &err), 0);
	assert_int_equal(ring.nkeys, 2);
	assert_string_equal(ring.keys[0].id, old_id);
	assert_string_equal(ring.keys[ring.active].id, new_id);
	opened = vars_keyring_unseal(&ring, "default", "db/creds", old_blob, &err);
	assert_true(json_equal(opened, items));
	json_decref(opened);

	/* the active key and unknown ones are not removed; a retired one is,
	 * and what it sealed then says which key it needs */
	assert_int_equal(vars_keyring_remove(&ring, new_id, &err), -EBUSY);
	assert_int_equal(vars_keyring_remove(&ring, "0123456789abcdef", &err), -ENOENT);
	assert_int_equal(vars_keyring_remove(&ring, old_id, &err), 0);
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(ring.nkeys, 1);
	assert_null(vars_keyring_unseal(&ring, "default", "db/creds", old_blob, &err));
	assert_non_null(strstr(err.msg, old_id));
	opened = vars_keyring_unseal(&ring, "default", "db/creds", new_blob, &err);
	assert_true(json_equal(opened, items));
	json_decref(opened);
	vars_keyring_close(&ring);
	assert_int_equal(vars_keyring_open(&ring, dir, &err), 0);
	assert_int_equal(ring.nkeys, 1);
	vars_keyring_close(&ring);

	/* a rotation cut short after keeping the old key: the kept copy is
	 * the active key, and the ring holds it once */
	unsigned char key[VARS_KEY_LEN];
	snprintf(path, sizeof(path), "%s/%s", dir, VARS_KEY_FILE);
	assert_int_equal(vars_key_read(path, key, NULL, &err), 0);
	char keys_dir[96];
	snprintf(keys_dir, sizeof(keys_dir), "%s/%s", dir, VARS_KEYS_DIR);
	retired_path(path, sizeof(path), dir, new_id);
	assert_int_equal(vars_key_write(keys_dir, path, key, false, &err), 0);
	assert_int_equal(vars_keyring_open(&ring, dir, &err), 0);
	assert_int_equal(ring.nkeys, 1);
	vars_keyring_close(&ring);
	unlink(path);

	/* a retired key file whose name is not its key's id, or that others
	 * may read: the ring does not open */
	retired_path(path, sizeof(path), dir, "00000000000000ff");
	assert_int_equal(vars_key_write(keys_dir, path, key, false, &err), 0);
	assert_int_equal(vars_keyring_open(&ring, dir, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "00000000000000ff"));
	unlink(path);
	retired_path(path, sizeof(path), dir, old_id);
	key[0] ^= 1; /* any key: the mode is checked first */
	assert_int_equal(vars_key_write(keys_dir, path, key, false, &err), 0);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(vars_keyring_open(&ring, dir, &err), -EPERM);
	unlink(path);
	rmdir(keys_dir);
	snprintf(path, sizeof(path), "%s/%s", dir, VARS_KEY_FILE);
	unlink(path);
	rmdir(dir);
	json_decref(old_blob);
	json_decref(new_blob);
	json_decref(items);
}

/* dir's active key file, with key. */
static void write_active_key(const char *dir, const unsigned char key[VARS_KEY_LEN])
{
	char path[128];
	struct herd_err err = { 0 };
	snprintf(path, sizeof(path), "%s/%s", dir, VARS_KEY_FILE);
	assert_int_equal(vars_key_write(dir, path, key, true, &err), 0);
}

static void remove_ring_dir(const char *dir)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, VARS_KEY_FILE);
	unlink(path);
	rmdir(dir);
}

/* Derived key material: HMAC-SHA256(key, label), the same from every ring
 * that holds the key (two data dirs with one key file, as servers of one
 * store are set up), another for another label or another key, none for a
 * key the ring does not hold. */
static void test_keyring_derive(void **state)
{
	char a[] = "/tmp/herd-ring-XXXXXX", b[] = "/tmp/herd-ring-XXXXXX",
	     c[] = "/tmp/herd-ring-XXXXXX", id[VARS_KEY_ID_LEN + 1], hex[2 * VARS_DERIVED_LEN + 1];
	static const char LABEL[] = "herd workload identity signing key v1";
	unsigned char key[VARS_KEY_LEN], da[VARS_DERIVED_LEN], db[VARS_DERIVED_LEN],
		dc[VARS_DERIVED_LEN], other[VARS_DERIVED_LEN];
	struct vars_keyring ra, rb, rc;
	struct herd_err err = { 0 };
	(void)state;

	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (unsigned char)i;
	assert_non_null(mkdtemp(a));
	assert_non_null(mkdtemp(b));
	assert_non_null(mkdtemp(c));
	write_active_key(a, key);
	write_active_key(b, key);
	assert_int_equal(vars_keyring_open(&ra, a, &err), 0);
	assert_int_equal(vars_keyring_open(&rb, b, &err), 0);
	assert_int_equal(vars_keyring_open(&rc, c, &err), 0); /* a key of its own */
	vars_keyring_active(&ra, id);

	/* HMAC-SHA256(key 00 01 .. 1f, LABEL), as python3's hmac computes it */
	assert_int_equal(vars_keyring_derive(&ra, id, LABEL, da, &err), 0);
	for (size_t i = 0; i < sizeof(da); i++)
		snprintf(hex + 2 * i, 3, "%02x", da[i]);
	assert_string_equal(hex, "fd4d9311df0f99edde39869f360718787c3a6955774cdcc9bd7149148a3f1233");
	assert_true(vars_keyring_holds(&rb, id));
	assert_int_equal(vars_keyring_derive(&rb, id, LABEL, db, &err), 0);
	assert_memory_equal(da, db, sizeof(da));
	assert_int_equal(vars_keyring_derive(&ra, id, "another purpose", other, &err), 0);
	assert_memory_not_equal(da, other, sizeof(da));

	/* another key: another id, other bytes; the first key's id unknown */
	assert_false(vars_keyring_holds(&rc, id));
	err.msg[0] = '\0';
	assert_int_equal(vars_keyring_derive(&rc, id, LABEL, dc, &err), -ENOENT);
	assert_non_null(strstr(err.msg, id));
	vars_keyring_active(&rc, id);
	assert_int_equal(vars_keyring_derive(&rc, id, LABEL, dc, &err), 0);
	assert_memory_not_equal(da, dc, sizeof(da));

	vars_keyring_close(&ra);
	vars_keyring_close(&rb);
	vars_keyring_close(&rc);
	remove_ring_dir(a);
	remove_ring_dir(b);
	remove_ring_dir(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_items),
		cmocka_unit_test(test_record_and_metadata),
		cmocka_unit_test(test_globs),
		cmocka_unit_test(test_policy_variables),
		cmocka_unit_test(test_key_and_sealing),
		cmocka_unit_test(test_keyring_rotate_and_remove),
		cmocka_unit_test(test_keyring_derive),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
