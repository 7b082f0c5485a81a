-- `bench gateway`: POST /v1/session.log with a bearer token ($LHT_TOKEN), each request a new
-- session with an id of its own (per thread and counter), over HTTP/1.1 keep-alive.
local threads = {}
local counter = 0

function setup(thread)
    thread:set("thread_id", #threads + 1)
    table.insert(threads, thread)
end

function init(args)
    token = os.getenv("LHT_TOKEN")
    salt = tonumber(os.getenv("LHT_SALT") or "0")
end

function request()
    counter = counter + 1
    local id = string.format("%08x-0000-4000-8000-%012d", 0x1000 * (salt + 1) + thread_id, counter)
    -- A 15-minute session that ended 1 to 11 hours ago, as the ZeroMQ clients' are.
    local finish = os.time() - (60 + counter % 600) * 60
    local body = string.format('{"id":"%s","activity":"mindfulness","start":"%s","end":"%s"}', id,
        os.date("!%Y-%m-%dT%H:%M:%SZ", finish - 900), os.date("!%Y-%m-%dT%H:%M:%SZ", finish))
    return wrk.format("POST", "/v1/session.log",
        { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }, body)
end
