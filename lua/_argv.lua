-- _argv.lua: reading ARGV in order (argv_reader).
-- Included, not run on its own (see rqfast/scriptload.py).

-- Reads ARGV (or `args`) from position `i` on: next() returns the next argument, list() a counted list,
-- pairs() a counted list of field/value pairs (flat), span() a counted list's position (and skips it).
local function argv_reader(i, args)
  local r = {}
  args = args or ARGV
  function r.next() local v = args[i]; i = i + 1; return v end
  function r.span()
    local n = tonumber(r.next())
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
