/* check.h — the autotune test programs take the CHECK macro of the other unit-test programs
 * (tests/common/check.h), found next to them by this relative include. */
#include "../common/check.h"
