/* spec_load: a job file, HCL or JSON, to a validated job (spec.h). */
#include <ctype.h>
#include <string.h>

#include "spec/job-int.h"
#include "spec/spec.h"

/* JSON job files are objects; HCL files start with a word or a comment. */
static bool looks_like_json(const char *text, size_t len)
{
	size_t i = 0;

	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		i = 3; /* a UTF-8 byte order mark some editors write */
	while (i < len && isspace((unsigned char)text[i]))
		i++;
	return i < len && text[i] == '{';
}

/* Both readers build the same kind of tree, with positions in every node,
 * and the decoder reads it directly; the tree is freed once the job has
 * copied what it keeps. */
struct job *spec_load(const char *text, size_t len, struct diag_list *diags)
{
	struct job *job = NULL;
	size_t start = diags->errors;

	if (looks_like_json(text, len)) {
		struct hcl_expr *expr = hcl_parse_json(text, len, diags);
		if (expr)
			job = job_from_expr(expr, diags);
		hcl_expr_free(expr);
	} else {
		struct hcl_body *body = hcl_parse(text, len, diags);
		struct hcl_expr *root = body ? job_hcl_to_expr(body, diags) : NULL;
		if (root) {
			bool converted_cleanly = diags->errors == start;
			job = job_from_expr(root, diags);
			if (job && !converted_cleanly) {
				/* the conversion reported errors: decoded for messages only */
				job_free(job);
				job = NULL;
			}
		}
		hcl_body_free(body);
	}
	return job;
}
