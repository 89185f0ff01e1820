/* jwt_keys: workload identity signing keys derived from the variables
 * keyring.  Two data dirs with one keyring key (servers of one store, the
 * key file copied) sign and publish the same key: a token one signs, the
 * other verifies.  Nothing is derived at open, each key once at its first
 * use, by one thread however many need it at once; nothing is written
 * beside the keyring.  A rotation's key signs from then on, the old one
 * verifies until it is removed. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/jwt.h"
#include "server/jwt_keys.h"
#include "server/vars_keyring.h"

#define NOW 1700000000

static json_t *claims(void)
{
	return json_pack("{s:s, s:I}", "sub", "global:default:train:g:t:default", "iat",
			 (json_int_t)NOW);
}

/* A data dir whose active key is a copy of from's (from NULL: its own). */
static void make_dir(char *dir, const char *from)
{
	char path[128];
	struct herd_err err = { 0 };
	assert_non_null(mkdtemp(dir));
	if (from) {
		unsigned char key[VARS_KEY_LEN];
		snprintf(path, sizeof(path), "%s/%s", from, VARS_KEY_FILE);
		assert_int_equal(vars_key_read(path, key, NULL, &err), 0);
		snprintf(path, sizeof(path), "%s/%s", dir, VARS_KEY_FILE);
		assert_int_equal(vars_key_write(dir, path, key, true, &err), 0);
	}
}

/* dir and the key files in it. */
static void remove_dir(const char *dir)
{
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static json_t *jwks(struct jwt_keys *keys)
{
	struct herd_err err = { 0 };
	json_t *set = jwt_keys_jwks(keys, &err);
	assert_non_null(set);
	return set;
}

static void test_servers_with_one_key_sign_alike(void **state)
{
	char a[] = "/tmp/herd-jwt-XXXXXX", b[] = "/tmp/herd-jwt-XXXXXX", c[] = "/tmp/herd-jwt-XXXXXX";
	char path[128], kid[VARS_KEY_ID_LEN + 1];
	struct vars_keyring ra, rb, rc;
	struct jwt_keys ka, kb, kc;
	struct herd_err err = { 0 };
	json_t *cl = claims(), *got = NULL, *sa, *sb, *sc;
	struct stat st;
	char *token;
	(void)state;

	make_dir(a, NULL);
	assert_int_equal(vars_keyring_open(&ra, a, &err), 0);
	make_dir(b, a);
	make_dir(c, NULL);
	assert_int_equal(vars_keyring_open(&rb, b, &err), 0);
	assert_int_equal(vars_keyring_open(&rc, c, &err), 0);
	jwt_keys_open(&ka, &ra);
	jwt_keys_open(&kb, &rb);
	jwt_keys_open(&kc, &rc);
	assert_int_equal(ka.derivations, 0);

	/* signed by one, verified by the other (the failover) */
	assert_int_equal(jwt_keys_sign(&ka, cl, &token, &err), 0);
	assert_int_equal(ka.derivations, 1);
	assert_int_equal(jwt_keys_verify(&kb, token, NOW, &got, &err), 0);
	assert_true(json_equal(got, cl));
	json_decref(got);
	assert_int_equal(kb.derivations, 1);
	/* the same set, the same key: published alike, derived once each */
	sa = jwks(&ka);
	sb = jwks(&kb);
	assert_int_equal(json_array_size(json_object_get(sa, "keys")), 1);
	assert_true(json_equal(sa, sb));
	vars_keyring_active(&ra, kid);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(sa, "keys"), 0), "kid")), kid);
	assert_int_equal(jwt_keys_verify(&ka, token, NOW, &got, &err), 0);
	json_decref(got);
	assert_int_equal(ka.derivations, 1);
	assert_int_equal(kb.derivations, 1);

	/* another keyring key: another key, and the token's kid unknown */
	sc = jwks(&kc);
	assert_false(json_equal(json_object_get(json_array_get(json_object_get(sa, "keys"), 0), "n"),
				json_object_get(json_array_get(json_object_get(sc, "keys"), 0), "n")));
	err.msg[0] = '\0';
	assert_int_equal(jwt_keys_verify(&kc, token, NOW, &got, &err), -ENOKEY);
	assert_non_null(strstr(err.msg, kid));
	assert_int_equal(kc.derivations, 1);

	/* nothing written beside the keyring */
	snprintf(path, sizeof(path), "%s/%s", a, VARS_KEYS_DIR);
	assert_int_equal(stat(path, &st), -1);

	free(token);
	json_decref(sa);
	json_decref(sb);
	json_decref(sc);
	json_decref(cl);
	jwt_keys_close(&ka);
	jwt_keys_close(&kb);
	jwt_keys_close(&kc);
	vars_keyring_close(&ra);
	vars_keyring_close(&rb);
	vars_keyring_close(&rc);
	remove_dir(a);
	remove_dir(b);
	remove_dir(c);
}

static void test_rotation_and_removal(void **state)
{
	char dir[] = "/tmp/herd-jwt-XXXXXX", old_id[VARS_KEY_ID_LEN + 1], new_id[VARS_KEY_ID_LEN + 1];
	struct vars_keyring ring;
	struct jwt_keys keys;
	struct herd_err err = { 0 };
	json_t *cl = claims(), *got = NULL, *set;
	char *old_token, *new_token;
	(void)state;

	make_dir(dir, NULL);
	assert_int_equal(vars_keyring_open(&ring, dir, &err), 0);
	jwt_keys_open(&keys, &ring);
	assert_int_equal(jwt_keys_sign(&keys, cl, &old_token, &err), 0);
	assert_int_equal(vars_keyring_rotate(&ring, old_id, new_id, &err), 0);

	/* the new key signs from now on (derived at that first use); both verify */
	assert_int_equal(jwt_keys_sign(&keys, cl, &new_token, &err), 0);
	assert_int_equal(keys.derivations, 2);
	struct jwt t;
	assert_int_equal(jwt_decode(new_token, &t, NULL), 0);
	assert_string_equal(t.kid, new_id);
	jwt_release(&t);
	assert_int_equal(jwt_keys_verify(&keys, old_token, NOW, &got, &err), 0);
	json_decref(got);
	set = jwks(&keys);
	assert_int_equal(json_array_size(json_object_get(set, "keys")), 2);
	json_decref(set);

	/* removed from the ring: the old token verifies no more, even before
	 * its key is forgotten; published: the new key alone */
	assert_int_equal(vars_keyring_remove(&ring, old_id, &err), 0);
	assert_int_equal(jwt_keys_verify(&keys, old_token, NOW, &got, &err), -ENOKEY);
	jwt_keys_forget(&keys, old_id);
	assert_int_equal(keys.nkeys, 1);
	assert_int_equal(jwt_keys_verify(&keys, old_token, NOW, &got, &err), -ENOKEY);
	assert_int_equal(jwt_keys_verify(&keys, new_token, NOW, &got, &err), 0);
	json_decref(got);
	set = jwks(&keys);
	assert_int_equal(json_array_size(json_object_get(set, "keys")), 1);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(set, "keys"), 0), "kid")), new_id);
	json_decref(set);
	assert_int_equal(keys.derivations, 2);

	free(old_token);
	free(new_token);
	json_decref(cl);
	jwt_keys_close(&keys);
	vars_keyring_close(&ring);
	remove_dir(dir);
}

struct first_use {
	struct jwt_keys *keys;
	const char *token;
	int rc;
};

static void *verify_once(void *arg)
{
	struct first_use *u = arg;
	json_t *got = NULL;
	u->rc = jwt_keys_verify(u->keys, u->token, NOW, &got, NULL);
	json_decref(got);
	return NULL;
}

/* Many verifies of one kid at once, none derived yet: each verifies, the
 * key is derived once. */
static void test_concurrent_first_use(void **state)
{
	char dir[] = "/tmp/herd-jwt-XXXXXX";
	struct vars_keyring ring;
	struct jwt_keys signer, keys;
	struct herd_err err = { 0 };
	struct first_use uses[8];
	pthread_t threads[8];
	json_t *cl = claims();
	char *token;
	(void)state;

	make_dir(dir, NULL);
	assert_int_equal(vars_keyring_open(&ring, dir, &err), 0);
	jwt_keys_open(&signer, &ring);
	assert_int_equal(jwt_keys_sign(&signer, cl, &token, &err), 0);
	jwt_keys_open(&keys, &ring);
	for (size_t i = 0; i < 8; i++) {
		uses[i] = (struct first_use){ &keys, token, 1 };
		assert_int_equal(pthread_create(&threads[i], NULL, verify_once, &uses[i]), 0);
	}
	for (size_t i = 0; i < 8; i++) {
		pthread_join(threads[i], NULL);
		assert_int_equal(uses[i].rc, 0);
	}
	assert_int_equal(keys.derivations, 1);
	assert_int_equal(keys.nkeys, 1);

	free(token);
	json_decref(cl);
	jwt_keys_close(&signer);
	jwt_keys_close(&keys);
	vars_keyring_close(&ring);
	remove_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_servers_with_one_key_sign_alike),
		cmocka_unit_test(test_rotation_and_removal),
		cmocka_unit_test(test_concurrent_first_use),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
