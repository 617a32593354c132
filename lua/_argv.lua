-- _argv.lua: reading ARGV in order (argv_reader).
-- Included, not run on its own (see rqfast/scriptload.py).

-- Reads ARGV (or `args`) from position `i` on: next() returns the next argument, take(n) the next n
-- (one unpack: the hot scripts read their fixed arguments so), list() a counted list (list(2): of
-- field/value pairs, flat), span() a counted list's first position and length, skipping it (span(2):
-- of pairs), for the caller to unpack(args, first, first + length - 1) without a copy.
local function argv_reader(i, args)
  local r = {}
  args = args or ARGV
  function r.next() local v = args[i]; i = i + 1; return v end
  function r.take(n)
    local start = i
    i = i + n
    return unpack(args, start, i - 1)
  end
  function r.span(width)
    local n = tonumber(r.next()) * (width or 1)
    local start = i
    i = i + n
    return start, n
  end
  function r.list(width)
    local n, out = tonumber(r.next()) * (width or 1), {}
    for j = 1, n do out[j] = args[i + j - 1] end
    i = i + n
    return out
  end
  return r
end
