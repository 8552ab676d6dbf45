-- wrk script for the load test's charge rows: each request is the next
-- line of $SIGNED (bench/signed-requests.py), never one twice; each wrk
-- thread takes every Nth line. Running out stops the thread's requests
-- with an error rather than replaying a signature.
local lines = {}
local threads = 0
function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end
function init(args)
  local f = assert(io.open(os.getenv("SIGNED"), "r"))
  local i = 0
  for line in f:lines() do
    if i % tonumber(os.getenv("WRK_THREADS") or "2") == id then
      local t, input, sig = line:match("([^\t]+)\t([^\t]+)\t([^\t]+)")
      lines[#lines + 1] = { t, input, sig }
    end
    i = i + 1
  end
  f:close()
  n = 0
end
function request()
  n = n + 1
  local l = lines[n]
  if l == nil then
    return wrk.format("GET", "/exhausted-signed-requests")
  end
  return wrk.format("GET", l[1], {
    ["User-Agent"] = "ExampleBot/1.0",
    ["crawler-max-price"] = "USD 1",
    ["Signature-Input"] = l[2],
    ["Signature"] = l[3],
  })
end
