/* Rust's standard library on Windows takes its random bytes from
 * ProcessPrng in bcryptprimitives.dll, which Wine before 9.0 lacks. This
 * stand-in, put beside the test executables, gives them from RtlGenRandom
 * (advapi32), so that the tests run under Debian 12's Wine. Test support
 * only: nothing of it ships. */
#include <windows.h>
#include <ntsecapi.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG take = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!RtlGenRandom(data, take)) return FALSE;
        data += take;
        len -= take;
    }
    return TRUE;
}
