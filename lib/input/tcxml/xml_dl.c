/* libxml2 loaded on first use (xml_dl.h says why). */
#define VMS_XML_DL_IMPL
#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>

#include "xml_dl.h"

struct vms_xml_api vms_xml;

int vms_xml_load(const char *path, struct vms_error *err)
{
	static bool loaded;
	if (loaded)
		return 0;
	/* the library the headers were compiled against (its soname) */
	void *h = dlopen("libxml2.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		/* the loader maps the library and its dependencies: when that fails for want
		 * of memory (ulimit -v) it is said as such, not as a missing libxml2 */
		const char *why = dlerror();
		if (why && (strstr(why, "failed to map segment") ||
			    strstr(why, "Cannot allocate memory")))
			return vms_error_set(err, VMS_ERR_NOMEM, "%s: out of memory at byte offset 0 "
					     "(loading libxml2: %s)", path, why);
		return vms_error_set(err, VMS_ERR_IO, "%s: reading XML needs libxml2 (%s)", path,
				     why ? why : "not found");
	}
	struct vms_xml_api a;
#define VMS_XML_SYM(f)                                                                  \
	a.f = (__typeof__(a.f))dlsym(h, #f);                                             \
	if (!a.f) {                                                                      \
		dlclose(h);                                                              \
		return vms_error_set(err, VMS_ERR_IO, "%s: reading XML needs libxml2, whose " \
				     "%s is missing", path, #f);                            \
	}
	VMS_XML_FUNCS(VMS_XML_SYM)
#undef VMS_XML_SYM
	vms_xml = a;
	loaded = true;
	return 0;
}
