job "x" {
  count 3
  a = 1 + 2
  b = "\q"
  a = 1
  c = [1, 2
}
}
