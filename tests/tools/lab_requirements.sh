# Sourced by the lab tests: exits 77 (CTest's "skipped") with the reason where the lab
# cannot run here: not root, no ip or tc, no network namespaces, veth or tbf.
[[ $(id -u) == 0 ]] || { echo "SKIP: the lab needs root (CAP_NET_ADMIN)"; exit 77; }
command -v ip >/dev/null && command -v tc >/dev/null || { echo "SKIP: ip or tc missing"; exit 77; }
lab_probe=dctprobe$$
ip netns add "$lab_probe" 2>/dev/null || { echo "SKIP: network namespaces do not work here"; exit 77; }
ip -n "$lab_probe" link add dctv0 type veth peer name dctv1 2>/dev/null &&
  tc -n "$lab_probe" qdisc add dev dctv0 root tbf rate 1mbit burst 32k limit 64k 2>/dev/null
lab_ok=$?
ip netns del "$lab_probe"
[[ $lab_ok == 0 ]] || { echo "SKIP: veth or tbf does not work here"; exit 77; }
