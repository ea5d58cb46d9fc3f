"""The file room: a notification file, its sidecar, ledger, receipts and ack."""
