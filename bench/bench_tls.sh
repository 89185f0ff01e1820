#!/bin/bash
# bench_tls.sh HERD [N]: what TLS costs a server, in CPU (utime+stime of the
# agent, /proc/PID/stat).  For each mode (plain, tls, mtls: tls with
# verify_https_client) a fresh server-only agent on 127.0.0.1 answers
#   - N GETs of /v1/agent/health on one kept-alive connection (one curl), and
#   - N/10 curl processes, a new connection (and handshake) each;
# printed as ms of server CPU per request.  Certificates are made with
# openssl in a temporary dir (ECDSA P-256, as docs/operations.md shows).
# Interleave and repeat (the machine is shared):
#   for i in 1 2 3; do bench/bench_tls.sh build/src/cli/herd 20000; done
set -euo pipefail
herd=$(realpath "$1")
n=${2:-20000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
ossl() { openssl "$@" >/dev/null 2>&1; }
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
ossl req -x509 "${ec[@]}" -keyout ca-key.pem -out ca.pem -days 2 -subj /CN=ca
for c in agent cli; do
	ossl req "${ec[@]}" -keyout $c-key.pem -out $c.csr -subj /CN=$c
	printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' > $c.ext
	ossl x509 -req -in $c.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 \
		-extfile $c.ext -out $c.pem
done
tck=$(getconf CLK_TCK)
for mode in plain tls mtls; do
	{
		echo 'bind_addr = "127.0.0.1"'
		echo 'server { enabled = true }'
		if [ $mode != plain ]; then
			echo 'tls {'
			echo '  http = true'
			echo "  ca_file = \"$tmp/ca.pem\""
			echo "  cert_file = \"$tmp/agent.pem\""
			echo "  key_file = \"$tmp/agent-key.pem\""
			[ $mode = mtls ] && echo '  verify_https_client = true'
			echo '}'
		fi
	} > $mode.hcl
	"$herd" agent -config $mode.hcl -http-port 0 -data-dir $tmp/$mode -log-level error \
		> $mode.out 2> $mode.err &
	pid=$!
	for _ in $(seq 100); do grep -q 'http port' $mode.out && break; sleep 0.1; done
	port=$(awk '/http port/ {print $3}' $mode.out)
	scheme=http opts=()
	[ $mode != plain ] && scheme=https opts=(--cacert ca.pem)
	[ $mode = mtls ] && opts+=(--cert cli.pem --key cli-key.pem)
	url=$scheme://127.0.0.1:$port/v1/agent/health
	cpu() { awk '{print $14 + $15}' /proc/$pid/stat; }
	sleep 0.5
	t0=$(cpu)
	curl -sf "${opts[@]}" -o /dev/null "$url?i=[1-$n]"
	t1=$(cpu)
	for _ in $(seq $((n / 10))); do curl -sf "${opts[@]}" -o /dev/null "$url"; done
	t2=$(cpu)
	kill $pid
	wait $pid || true
	awk -v m=$mode -v a=$((t1 - t0)) -v b=$((t2 - t1)) -v n=$n -v t=$tck 'BEGIN {
		printf "%-5s kept-alive %.4f ms/request  new connection %.3f ms/request\n",
		       m, a * 1000 / t / n, b * 1000 / t / (n / 10) }'
done
