"""The room inbox: rooms (file and redis), ledger, receipts, acks, pushes."""
