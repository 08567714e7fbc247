package device

// UpsertDevice is the statement a device writes its status with, for the
// wire test that reads it back as the demo does.
const UpsertDevice = upsertDevice
