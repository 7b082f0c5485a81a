import Foundation
import LHTSchema
import ServiceTestSupport
import Testing
import TestSupport
import ZoneRules

/// Every service serves exactly the catalog's ops for it: every op `Ops.served(by:)` names is
/// registered, and nothing else is.
@Suite struct CatalogServiceTests {
    @Test func everyServiceRegistersExactlyItsCatalogOps() throws {
        let rig = try ServiceRig(.inproc)
        let logger = try rig.sessionLogger()
        let planner = try rig.planner(clock: Instant.now().minuteFloor, following: logger)
        let notifier = try rig.notifier(following: planner, logger: logger)
        let streak = try rig.streak(following: logger)
        let services = [logger, planner, notifier, streak]
        #expect(Set(services.map(\.name)) == Set(ServiceName.allCases))
        for service in services {
            let catalog = Set(Ops.served(by: service.name).map(\.name))
            #expect(service.registeredOps == catalog, "\(service.name): not served \(catalog.subtracting(service.registeredOps)), not in the catalog \(service.registeredOps.subtracting(catalog))")
            // And each answers on its socket as the catalog says: health names the service.
            let health = try rig.client(service).call(Ops.health, NoFields())
            #expect(health.service == service.name.rawValue)
            // The services whose answers depend on zone rules name the tzdata they use.
            let usesZoneRules = [ServiceName.reminderPlanner, .noalcStreak].contains(service.name)
            #expect(health.tzdata == (usesZoneRules ? TZData.system.version : nil))
        }
        #expect(TZData.system.version != "unknown", "the system tzdata has no tzdata.zi")
        // Every op of the catalog is served by some service.
        #expect(Set(services.flatMap(\.registeredOps)) == Set(Ops.all.map(\.name)))
    }
}
