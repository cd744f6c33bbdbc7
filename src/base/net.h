/* net.h - loopback TCP port helpers. */
#ifndef MP_NET_H
#define MP_NET_H

#include "compat.h"

/* Pick a free TCP port on 127.0.0.1 (>0) or -errno on error. The port is
 * free when this returns; another process may take it before it is used. */
int mp_free_port(void);
/* True when something already listens on port (bind to INADDR_ANY fails
 * with EADDRINUSE). */
bool mp_port_in_use(int port);

#endif
