-- Shared by the cell scripts: a Celery task event published in the script's own step
-- (workers/hooks/events.py builds it with kombu). ARGV from `at`: topic ('' for none), the
-- message with "@body@" where its body goes, and the body with "@attempt@" and "@retries@"
-- to fill in; the body is base64-encoded into the message as kombu's Redis channel does.
local B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
local function base64(text)
  local out = {}
  for i = 1, #text, 3 do
    local a, b, c = string.byte(text, i, i + 2)
    local n = a * 65536 + (b or 0) * 256 + (c or 0)
    local quad = ''
    for shift = 18, 0, -6 do
      local digit = math.floor(n / 2 ^ shift) % 64
      quad = quad .. string.sub(B64, digit + 1, digit + 1)
    end
    -- a last group of one or two bytes keeps two or three digits and pads with '='
    if not b then quad = string.sub(quad, 1, 2) .. '==' elseif not c then quad = string.sub(quad, 1, 3) .. '=' end
    out[#out + 1] = quad
  end
  return table.concat(out)
end
local function publish_event(at, attempt)
  if ARGV[at] == '' then return end
  local body = string.gsub(ARGV[at + 2], '@attempt@', tostring(attempt))
  body = string.gsub(body, '"@retries@"', tostring(attempt - 1))
  local message = string.gsub(ARGV[at + 1], '@body@', base64(body))
  redis.call('PUBLISH', ARGV[at], message)
end
