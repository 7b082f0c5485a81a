import Foundation

extension ServiceHost {
    /// Serves the api requests waiting right now, exactly as a turn of the loop would (one batch,
    /// replies sent once what they depend on is on disk), and returns without blocking when there are none.
    ///
    /// For an `.outside` handler whose work runs in committed steps (the planner's `clock.advance`
    /// over months): calling this between steps keeps the service answering meanwhile instead of
    /// after all of it. Rules for the caller: call it only between transactions (never inside
    /// `write`); the requests served here are answered before the one in hand (each client still
    /// gets its own reply, by routing envelope); and refuse a second request of your own kind that
    /// arrives meanwhile, since it would run nested inside the first. Watched sockets, feeds, `Service.tick` and
    /// heartbeats wait for the loop.
    public func serveWaitingRequests() throws {
        commits.runDurable()
        try serveAPI()
    }
}
