import Foundation
import LHTSchema
import Testing

/// `FrameHead`: what a client, the gateway and the host's log lines read of a frame without its
/// payload type. A member missing or of another type is nil; anything but one JSON object has no head.
@Suite struct FrameHeadTests {
    func head(_ json: String) -> FrameHead? { FrameHead(Data(json.utf8)) }

    @Test func aRequestsOpAndTheIdsItsDataNames() throws {
        let request = try #require(head(#"{"v":1,"op":"reminder.put","data":{"id":"r-1","userId":"alice","time":"07:00"}}"#))
        #expect(request.op == "reminder.put")
        #expect(request.dataString("id") == "r-1")
        #expect(request.dataString("userId") == "alice")
        #expect(request.dataString("time") == "07:00")
        #expect(request.dataString("weekdays") == nil)
        #expect(request.ok == nil && request.errorCode == nil)
        // Escapes are read as Foundation reads them.
        #expect(head(#"{"op":"h\u0065alth","data":{"user\u0049d":"b\"ob"}}"#)?.op == "health")
        #expect(head(#"{"op":"h\u0065alth","data":{"user\u0049d":"b\"ob"}}"#)?.dataString("userId") == #"b"ob"#)
    }

    @Test func aRepliesOutcome() throws {
        let failure = try #require(FrameHead(Reply.failure(WireError(.notFound, "no such reminder", field: "data.id"))))
        #expect(failure.ok == false)
        #expect(failure.errorCode == .notFound)
        let success = try #require(FrameHead(Reply.success(rawData: Data(#"{"id":"x"}"#.utf8))))
        #expect(success.ok == true && success.errorCode == nil)
        #expect(success.dataString("id") == "x")
        // A code this version does not know is no code.
        #expect(head(#"{"v":1,"ok":false,"error":{"code":"teapot","message":"x"}}"#)?.errorCode == nil)
    }

    @Test func membersOfAnotherTypeAreNil() throws {
        let odd = try #require(head(#"{"op":7,"ok":"yes","error":"bad","data":{"id":5,"userId":null}}"#))
        #expect(odd.op == nil && odd.ok == nil && odd.errorCode == nil)
        #expect(odd.dataString("id") == nil && odd.dataString("userId") == nil)
        #expect(head(#"{"op":"health","data":[1,2]}"#)?.dataString("id") == nil)
        #expect(head(#"{"op":"health","data":"id"}"#)?.dataString("id") == nil)
    }

    @Test func onlyOneJSONObjectHasAHead() {
        for text in ["", "not json", "[]", #""op""#, "null", "7", #"{"op":"health"} {}"#, #"{"op":"health""#] {
            #expect(head(text) == nil, "\(text)")
        }
        #expect(head("{}") != nil)
    }
}
