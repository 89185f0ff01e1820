a = "tab\t\"q\" \\ \u00e9 \U0001F600 $${lit} %%{lit}"
b = "${meta["x"]} %{ if true }y%{ endif }"
c = <<EOF
raw ${x} \n
EOF
d = [1, -2, 3.5, 1e3, 9223372036854775808, true, false, null, [], {}]
e = { k = "v", "k2": 2,
  k3 = [ "x", ]
}
/* block
comment */ f = 0
