import AerieCore
import DeletePlugin
import Testing

@Suite(.timeLimit(.minutes(10))) struct ClosedNoticeTests {
    @Test func isAProblemReportThreadedToTheConnection() throws {
        let notice = ClosedNotice.message(threadId: "req-1", id: "n-1")
        #expect(notice["@type"] == "https://didcomm.org/notification/1.0/problem-report")
        #expect(notice["@id"] == "n-1")
        #expect(notice["description"]?["code"] == "connection_closed")
        #expect(notice["description"]?["en"]?.stringValue?.isEmpty == false)
        #expect(notice["~thread"]?["thid"] == "req-1")
        #expect(ClosedNotice.message(threadId: nil)["~thread"] == nil)
    }

    @Test func everyKindOfConnectionDataIsRemovedOnce() {
        let plugin = ConnectionData(kind: "plugin_table") { _, _ in 0 }
        let kinds = ConnectionData.all(plugins: [plugin]).map(\.kind)
        #expect(kinds == ["outbox", "mailbox", "plugin_table", "tenant_keys"])
        #expect(Set(kinds).count == kinds.count)
    }
}
