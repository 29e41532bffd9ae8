-- wrk script of bench/server.py: cycles through a file of absolute URLs, one a line,
-- sending each as a proxy request ("GET http://host/path HTTP/1.1"), and prints one
-- JSON line prefixed with WRKJSON when the run ends.
--
--   wrk -t1 -c64 -d10s -s bench/wrk_urls.lua http://127.0.0.1:PORT -- URLFILE [gzip]
--
-- With "gzip" every request carries "Accept-Encoding: gzip", as Scrapy's requests do.

local requests = {}
local index = 0

function init(args)
  local extra = ""
  if args[2] == "gzip" then
    extra = "Accept-Encoding: gzip\r\n"
  end
  for url in io.lines(args[1]) do
    local host = url:match("^http://([^/:?]+)")
    if host then
      requests[#requests + 1] = "GET " .. url .. " HTTP/1.1\r\nHost: " .. host .. "\r\n"
        .. "User-Agent: irlscrapy-bench\r\n" .. extra .. "\r\n"
    end
  end
  if #requests == 0 then
    error("no http:// URLs in " .. tostring(args[1]))
  end
end

function request()
  index = index % #requests + 1
  return requests[index]
end

function done(summary, latency, requests_stats)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests": %d, "bytes": %d, "duration_us": %d, "errors_connect": %d, '
      .. '"errors_read": %d, "errors_write": %d, "errors_status": %d, "errors_timeout": %d, '
      .. '"latency_p50_us": %d, "latency_p99_us": %d}\n',
    summary.requests, summary.bytes, summary.duration, e.connect, e.read, e.write,
    e.status, e.timeout, latency:percentile(50), latency:percentile(99)))
end
