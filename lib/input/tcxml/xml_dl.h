/* libxml2, loaded when the first XML file is parsed (dlopen), not linked: linking it made
 * every vmscope process pay about 1 ms of CPU at start for libxml2's ICU and C++ runtime
 * (relocations, page faults), whatever the trace format; only this reader needs it.
 *
 * Include this after libxml's headers: the xml* functions parse.c calls become calls through
 * the pointers below, filled by vms_xml_load (which parse.c calls before any of them). */
#ifndef VMS_TCXML_XML_DL_H
#define VMS_TCXML_XML_DL_H

#include <libxml/parser.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlreader.h>

#include "vmscope/error.h"

#define VMS_XML_FUNCS(X)                                                                   \
	X(xmlSetGenericErrorFunc) X(xmlReaderForFile) X(xmlTextReaderSetStructuredErrorHandler) \
	X(xmlFreeTextReader) X(xmlTextReaderMoveToAttribute) X(xmlTextReaderConstValue)        \
	X(xmlTextReaderMoveToElement) X(xmlTextReaderGetParserLineNumber)                     \
	X(xmlTextReaderIsEmptyElement) X(xmlTextReaderRead) X(xmlTextReaderNodeType)            \
	X(xmlTextReaderDepth) X(xmlTextReaderConstLocalName) X(xmlTextReaderByteConsumed)

struct vms_xml_api {
#define VMS_XML_PTR(f) __typeof__(&f) f;
	VMS_XML_FUNCS(VMS_XML_PTR)
#undef VMS_XML_PTR
};
extern struct vms_xml_api vms_xml;

/* Load libxml2 once (0), or say it cannot be (a vms_status, err set). */
int vms_xml_load(const char *path, struct vms_error *err);

#ifndef VMS_XML_DL_IMPL
#define xmlSetGenericErrorFunc (vms_xml.xmlSetGenericErrorFunc)
#define xmlReaderForFile (vms_xml.xmlReaderForFile)
#define xmlTextReaderSetStructuredErrorHandler (vms_xml.xmlTextReaderSetStructuredErrorHandler)
#define xmlFreeTextReader (vms_xml.xmlFreeTextReader)
#define xmlTextReaderMoveToAttribute (vms_xml.xmlTextReaderMoveToAttribute)
#define xmlTextReaderConstValue (vms_xml.xmlTextReaderConstValue)
#define xmlTextReaderMoveToElement (vms_xml.xmlTextReaderMoveToElement)
#define xmlTextReaderGetParserLineNumber (vms_xml.xmlTextReaderGetParserLineNumber)
#define xmlTextReaderIsEmptyElement (vms_xml.xmlTextReaderIsEmptyElement)
#define xmlTextReaderRead (vms_xml.xmlTextReaderRead)
#define xmlTextReaderNodeType (vms_xml.xmlTextReaderNodeType)
#define xmlTextReaderDepth (vms_xml.xmlTextReaderDepth)
#define xmlTextReaderConstLocalName (vms_xml.xmlTextReaderConstLocalName)
#define xmlTextReaderByteConsumed (vms_xml.xmlTextReaderByteConsumed)
#endif

#endif
