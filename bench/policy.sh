# Sourced by bench/instructions and bench/paired-compare: the crawlgate
# policy of a row. `write_policy KIND LISTEN ADMIN` prints it for a KIND
# `cg` (the realistic policy of bench/gen-realistic-policy.py) or
# `cg+MODE`, the same policy plus the load test's `[[robots_tag]]` rule on
# `/` (`noindex, nosnippet`): MODE `tag` sends it as headers only
# (Robots-Tag, X-Robots-Tag), `inject`, `audit` or `enforce` also rewrite
# the HTML with that `html` mode; `cg+md` is `cg+inject` plus the load
# test's `[markdown] paths = ["/"]` (run it with ACCEPT=text/markdown to
# measure the Markdown responses). `cg+rate` adds the load test's rate rule
# on `*` that never trips, in the in-process store; `cg+redis` the same with
# its buckets in the redis-server at 127.0.0.1:$REDIS_PORT.
write_policy() {
  local kind=$1 listen=$2 admin=$3
  case $kind in
    cg+rate|cg+redis)
      python3 bench/gen-realistic-policy.py "$listen" "$admin" 127.0.0.1:${ORIGIN_PORT:-38081} \
        | sed 's/^user_agents = \["\*"\]$/user_agents = ["*"]\nrate = "1000000\/s"\nburst = 1000000/'
      [ "$kind" = cg+rate ] || printf '\n[limits]\nstore = "redis://127.0.0.1:%s/0"\n' "${REDIS_PORT:?cg+redis needs REDIS_PORT}"
      return ;;
  esac
  python3 bench/gen-realistic-policy.py "$listen" "$admin" 127.0.0.1:${ORIGIN_PORT:-38081}
  case $kind in
    cg) ;;
    cg+tag|cg+inject|cg+audit|cg+enforce)
      printf '\n[[robots_tag]]\npath = "/"\nrules = ["noindex", "nosnippet"]\n'
      [ "$kind" = cg+tag ] || printf 'html = "%s"\n' "${kind#cg+}" ;;
    cg+md)
      printf '\n[[robots_tag]]\npath = "/"\nrules = ["noindex", "nosnippet"]\nhtml = "inject"\n'
      printf '\n[markdown]\npaths = ["/"]\n' ;;
    *) echo "unknown kind $kind (cg, cg+tag, cg+inject, cg+audit, cg+enforce, cg+md, cg+rate, cg+redis)" >&2; return 1 ;;
  esac
}
