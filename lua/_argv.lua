-- _argv.lua: reading ARGV in order (argv_reader).
-- Included, not run on its own (see rqfast/scriptload.py).

-- Reads ARGV (or `args`) from position `i` on: r:next() returns the next argument, r:take(n) the next
-- n (one unpack: the hot scripts read their fixed arguments so), r:list() a counted list (r:list(2):
-- of field/value pairs, flat), r:span() a counted list's first position and length, skipping it
-- (r:span(2): of pairs), for the caller to unpack(args, first, first + length - 1) without a copy.
-- The methods are defined once (once per server for a function library): a reader is one small table.
local ArgvReader = {}
ArgvReader.__index = ArgvReader

function ArgvReader.next(r)
  local i = r.i
  r.i = i + 1
  return r.args[i]
end

function ArgvReader.take(r, n)
  local start = r.i
  r.i = start + n
  return unpack(r.args, start, start + n - 1)
end

function ArgvReader.span(r, width)
  local n = tonumber(r:next()) * (width or 1)
  local start = r.i
  r.i = start + n
  return start, n
end

function ArgvReader.list(r, width)
  local n, out, args, i = tonumber(r:next()) * (width or 1), {}, r.args, r.i
  for j = 1, n do out[j] = args[i + j - 1] end
  r.i = i + n
  return out
end

local function argv_reader(i, args)
  return setmetatable({i = i, args = args or ARGV}, ArgvReader)
end
